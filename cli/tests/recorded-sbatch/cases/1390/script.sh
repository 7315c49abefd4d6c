#!/bin/bash
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH --wckey k1
## note: #SBATCH -n 999 is not a directive here
#SBATCH --nice 0

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
