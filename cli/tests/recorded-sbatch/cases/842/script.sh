#!/bin/bash
#PBS -l nodes=2:ppn=2
#SBATCH -N 1
## note: #SBATCH -n 999 is not a directive here
#SBATCH -c64
#SBATCH -d "afterok:{P2},afternotok:{P3}"
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gres gpu:1g.10gb:2
#SBATCH --reservation=nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
