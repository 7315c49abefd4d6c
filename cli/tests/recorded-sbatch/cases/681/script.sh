#!/bin/bash
#SBATCH --export=NONE
#SBATCH --job-name=named
#SBATCH --exclude=n[3-4]
#SBATCH --wckey=k1

#SBATCH --dependency=afterany:{P1}:{P3}
#SBATCH --comment "combo, with comma"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
