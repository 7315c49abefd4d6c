#!/bin/bash
##SBATCH -J doublehash
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
