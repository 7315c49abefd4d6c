#!/bin/bash
#SBATCH --export=NONE
#SBATCH -n 8


#SBATCH --comment "combo, with comma"
#SBATCH --nice -3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
