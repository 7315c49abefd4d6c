#!/bin/bash
#SBATCH --reservation=nosuchresv
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH --dep=afterok:{P1}
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
