#!/bin/bash
#SBATCH -H
#SBATCH -d afterany:{P5}
#SBATCH --comment="random combo"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
