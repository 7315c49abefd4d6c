#!/bin/bash
#SBATCH --mincpus 8
#SBATCH --reservation=nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
