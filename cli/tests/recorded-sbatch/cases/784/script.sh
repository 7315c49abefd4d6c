#!/bin/bash

#SBATCH --kill-on-invalid-dep=yes
#SBATCH --account=bio
#SBATCH --comment="it's # here"
#SBATCH --nice 0
#SBATCH -wn1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
