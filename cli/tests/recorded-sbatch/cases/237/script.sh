#!/bin/bash
#SBATCH -J dos
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
