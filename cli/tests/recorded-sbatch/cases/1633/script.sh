#!/bin/bash
#SBATCH --gpus=1g.10gb:3
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem-per-cpu=256
#SBATCH --nice 5
#SBATCH --array=0-15
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
