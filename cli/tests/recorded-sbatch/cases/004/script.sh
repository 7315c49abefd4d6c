#!/bin/bash
#SBATCH -J scriptname
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
