#!/bin/bash
#SBATCH --cpus-per-t=2
#SBATCH -D /tmp
#SBATCH --comment="it's # here"
#SBATCH --export=ALL
#SBATCH --gpus-per-node 1g.10gb:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
