#!/bin/bash
#PBS -v A=1,B=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
