#!/bin/bash
#PBS -W depend=afterok:{P1}
#SBATCH --mail-type END
#SBATCH --nice -3
#SBATCH --mem-per-cpu=2048K
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
