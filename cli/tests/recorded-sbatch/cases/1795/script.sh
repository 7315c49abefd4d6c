#!/bin/bash
#SBATCH -q high
#SBATCH --mincpus=8
## note: #SBATCH -n 999 is not a directive here
#SBATCH -daftercorr:{P5}
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
