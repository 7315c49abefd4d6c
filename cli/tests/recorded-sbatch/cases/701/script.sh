#!/bin/bash
#SBATCH --open-mode=append
#SBATCH --output %x-%j.log
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
