#!/bin/bash

## note: #SBATCH -n 999 is not a directive here
#SBATCH -o %A_%a.out
#SBATCH --comment="combo, with comma"
#SBATCH -i in-%j.txt
#SBATCH --error %x.err
#SBATCH --kill-on-invalid-dep yes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
