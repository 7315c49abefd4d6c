#!/bin/bash
#SBATCH -i in-%j.txt
#SBATCH --nice 5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
