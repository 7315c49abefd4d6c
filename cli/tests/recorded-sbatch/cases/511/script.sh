#!/bin/bash
#SBATCH -p batch
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
