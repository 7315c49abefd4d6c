#!/bin/bash
#SBATCH -t 5
#BSUB -W 10
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
