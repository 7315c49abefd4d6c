#!/bin/bash
#SBATCH --dependency after:{P4}+3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
