#!/bin/bash

#SBATCH --export NONE

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
