#!/bin/bash
# a comment

#SBATCH -J c1
## another

#SBATCH -t 7
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
