#!/bin/bash
#SBATCH --gres=gpu:1g.10gb:1
#PBS -l naccelerators=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
