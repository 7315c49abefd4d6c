#!/bin/bash
#SBATCH --reservation=nosuchresv
#SBATCH --partition debug
#SBATCH --mail-type=END
#SBATCH --nice=0
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
