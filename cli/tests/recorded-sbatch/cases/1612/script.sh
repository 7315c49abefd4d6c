#!/bin/bash
#SBATCH --mem-per-cpu=1G
#SBATCH --error %x.err
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
