#!/bin/bash
#SBATCH -J tabbed	
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
