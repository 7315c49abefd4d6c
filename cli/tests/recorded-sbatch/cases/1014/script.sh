#!/bin/bash
#SBATCH -i in-%j.txt
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
