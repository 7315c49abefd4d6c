#!/bin/bash
#SBATCH --reservation=nosuchresv
#SBATCH -d afterany:{P5}
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
