#!/bin/bash
#SBATCH -qhigh

#PBS -N pbsjob
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
