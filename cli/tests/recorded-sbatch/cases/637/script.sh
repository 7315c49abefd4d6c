#!/bin/bash

#SBATCH --account bio
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
