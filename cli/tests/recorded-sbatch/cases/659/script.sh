#!/bin/bash
#SBATCH --time-min 10
#SBATCH --wckey k1
#SBATCH --requeue
#SBATCH --export NONE
#SBATCH --comment "combo, with comma"
#SBATCH --dependency=afterok:{P1}?afternotok:{P2}
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
