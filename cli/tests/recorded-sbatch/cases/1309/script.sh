#!/bin/bash

#SBATCH --wckey=k1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
