#!/bin/bash
#SBATCH -d afterok:{P2},afternotok:{P3}
#SBATCH --kill-on-invalid-dep=yes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
