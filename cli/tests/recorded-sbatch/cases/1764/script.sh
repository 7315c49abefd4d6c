#!/bin/bash
#SBATCH --dependency afterok:{P1}?afternotok:{P2}
#SBATCH -i in-%j.txt
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
