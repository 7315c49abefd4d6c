#!/bin/bash
#sbatch -J lower
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
