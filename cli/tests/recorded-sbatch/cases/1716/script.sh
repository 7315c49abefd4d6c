#!/bin/bash
#SBATCH --account=bio
#SBATCH --mincpus 8

#SBATCH --reservation=nosuchresv
#SBATCH -i in-%j.txt
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
