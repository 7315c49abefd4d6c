#!/bin/bash
#SBATCH --error=%x.err
#SBATCH --exclude n[3-4]
#SBATCH --kill-on-invalid-dep yes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
