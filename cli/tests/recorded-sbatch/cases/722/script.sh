#!/bin/bash
#SBATCH --comment="random combo"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
