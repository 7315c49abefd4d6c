#!/bin/bash
#SBATCH --qos=normal
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
