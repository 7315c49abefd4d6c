#!/bin/bash
#SBATCH --time=2:00:00
## note: #SBATCH -n 999 is not a directive here
#SBATCH -c2
#SBATCH -iin-%j.txt
#SBATCH --export=COMBO=1
#SBATCH --reservation nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
