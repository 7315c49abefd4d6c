#!/bin/bash
#SBATCH --open-mode=append

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
