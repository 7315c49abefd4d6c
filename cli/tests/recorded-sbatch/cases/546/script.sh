#!/bin/bash
#SBATCH -pbatch
#SBATCH -G2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
