#! /bin/bash
#SBATCH -J spaceshebang
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
