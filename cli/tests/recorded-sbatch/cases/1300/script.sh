#!/bin/bash
#SBATCH --comment="combo, with comma"
#SBATCH --nodes=2-4
#SBATCH -w n1
#SBATCH --gres gpu:1g.10gb:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
