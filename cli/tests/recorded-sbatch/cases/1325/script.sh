#!/bin/bash
#SBATCH --cpus-per-gpu 4
#SBATCH --mail-type=END
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
