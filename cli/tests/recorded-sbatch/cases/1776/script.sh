#!/bin/bash

#SBATCH -H
#SBATCH -wn3,n4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
