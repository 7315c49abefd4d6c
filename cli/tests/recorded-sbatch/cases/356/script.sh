#!/bin/bash
#SBATCH -J scripted
#SBATCH --output=%x.%j.log
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
