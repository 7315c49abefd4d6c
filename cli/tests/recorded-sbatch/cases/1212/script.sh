#!/bin/bash
#SBATCH --gpus-per-node 1g.10gb:2
#SBATCH --nice 0
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
