#!/bin/bash
#SBATCH --begin=2030-06-01T12:00:00
#SBATCH --oversubscribe
#SBATCH --wckey k1
#SBATCH -i in-%j.txt
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
