#!/bin/bash
#SBATCH -o 'my out %j.log'
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
