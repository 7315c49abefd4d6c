#!/bin/bash
#SBATCH --nodes 2-4
#PBS -l mem=2gb
#SBATCH -s
#SBATCH --dependency=afterok:{P1}?afternotok:{P2}
#SBATCH --error %x.err
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
