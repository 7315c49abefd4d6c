#!/bin/bash
#SBATCH --nodelist n[1-2]
#SBATCH --exclusive
#SBATCH -D /tmp
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
