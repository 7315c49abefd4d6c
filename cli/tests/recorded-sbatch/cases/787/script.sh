#!/bin/bash
#SBATCH --outp ab-%j.out

#SBATCH --gpus=1
#PBS -l nodes=2:ppn=2
#SBATCH --gres gpu:1g.10gb:2
#SBATCH --cpus-per-task=8
# SBATCH --mem=1T (not a directive: space)

#SBATCH --requeue
#SBATCH -o %A_%a.out
#SBATCH --mail-type=END
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
