#!/bin/bash
#SBATCH --nice=-3
#SBATCH --gpus-per-task 1
#SBATCH --partition debug
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
#SBATCH -o /scratch/oracle/%u-%j.out

#SBATCH --dependency=afterany:{P1}:{P3}
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
