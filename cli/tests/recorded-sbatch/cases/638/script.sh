#!/bin/bash
#SBATCH --error=%x.err
#SBATCH -d aftercorr:{P5}
#SBATCH --mem-per-cpu 2048K
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
