#!/bin/bash
#SBATCH --error=%x.err
#SBATCH -dafterany:{P5}
#SBATCH --time-min=10
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
