#!/bin/bash
#SBATCH -o script-%j.out
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
